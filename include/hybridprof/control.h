/* hybridprof's control API: record only the part of a run that matters.
 *
 *   hybridprof_start();             // open the capture window
 *   ... the phase to profile ...
 *   hybridprof_mark("epoch 4 done"); // a named point in the archive
 *   hybridprof_stop();              // close it
 *
 * Link with -lhybridprof_control (pkg-config hybridprof, or CMake's
 * find_package(hybridprof) and hybridprof::control). Without the profiler
 * every call is a no-op that returns at once; under `hybridprof` the
 * preloaded runtime answers them. Run with `hybridprof --paused` to start
 * with the window closed. Outside a window the samplers are stopped and no
 * call is traced. A start with the window open, or a stop with it closed,
 * changes nothing (the archive counts them). Not for signal handlers. */
#ifndef HYBRIDPROF_CONTROL_H
#define HYBRIDPROF_CONTROL_H

#ifdef __cplusplus
extern "C" {
#endif

/* Opens the capture window of this process. */
void hybridprof_start(void);
/* Closes it: what ran inside is recorded, what runs after is not. */
void hybridprof_stop(void);
/* A named point of the process's time (the text is copied). */
void hybridprof_mark(const char* text);
/* 1 when the profiler runs in this process and the window is open, else 0. */
int hybridprof_recording(void);

#ifdef __cplusplus
}
#endif

#endif /* HYBRIDPROF_CONTROL_H */
