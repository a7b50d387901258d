// The archive of an MPI job, written by its ranks together at the end of the
// job, through MPI (Score-P's way): each rank reads and symbolizes its own
// raw data, the ranks exchange their processes' definitions so that every
// rank defines the same archive, and each writes its own threads' events
// into it while rank 0 writes the global definitions (OTF2's MPI collective
// callbacks). Symbolization and event conversion run on all ranks at once.
//
// Lives in its own library, libhybridprof_job_archive.so, which links
// libmpi, OTF2 and libdw: the runtime loads it at exit, only in a rank that
// called MPI_Finalize, so no other program pays for them.
//
// The archive is written into JOB/.job-archive/ and moved into JOB only
// when complete, followed by JOB/job-archive.result (the finalizer's
// Result, which the launcher reports). When any rank cannot take part
// (unreadable or incomplete raw data, an error while writing), all ranks
// give up together and nothing is left in JOB: the last launcher then
// writes the archive from the raw data as it does for a job that died.
#pragma once

// The entry point and the shared names.
#include "common/job_archive_entry.h"
