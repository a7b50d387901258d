// The descriptors the profiler keeps open inside the program (its raw
// stream, its drain's eventfd, each thread's perf_event): out of the
// program's way and out of its reach. Adopted ones move to numbers of 512
// and above, where the program's own open() calls do not land, and the
// runtime's interposers keep the program's close(), close_range() and
// closefrom() from closing them and its dup2()/dup3() from replacing them
// (ours moves elsewhere first). Without this a program that closes every
// descriptor above 2 (daemons, launchers) had the profiler write its data
// into the program's next file.
#pragma once

#include <atomic>

namespace hybridprof::own_fds {

// Moves `fd` to a number >= kLowest (close-on-exec, the original closed)
// and registers it; returns the number to use (fd itself when it could not
// move). `slot` (may be null) is where its user keeps the number: updated
// when the descriptor has to move again (make_way).
inline constexpr int kLowest = 512;
int adopt(int fd, std::atomic<int>* slot = nullptr);

// Async-signal-safe and lock-free, for descriptors without a slot (each
// thread's perf event, opened in its sample handler too): moves `fd` to
// kLowest or above and registers it; where it cannot move (the program's
// limit on descriptors is near) closes it and returns -EMFILE, so that the
// program keeps every number it may open.
int adopt_out_of_reach(int fd);
// Async-signal-safe and lock-free: closes such a descriptor unless the
// program took its number over (dup2); false then.
bool close_out_of_reach(int fd);

// Before the profiler closes one of its own: false when it is no longer
// the profiler's (a program's dup2() took over a slot-less one): then the
// number is the program's and must not be closed.
bool release(int fd);

// Async-signal-safe: is `fd` one of the profiler's? The smallest of ours
// at `from` or above, -1 when none.
bool owned(int fd);
int next_owned(int from);

// For the interposers: the program is about to make `fd` something else
// (dup2/dup3 onto it). A descriptor of ours moves to another number first
// (its slot follows); a slot-less one is given up to the program.
void make_way(int fd);

}  // namespace hybridprof::own_fds
