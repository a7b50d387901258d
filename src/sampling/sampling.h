// The sampling module in one include: event names (event_encoding.h), the
// per-process choice of mechanism (sampling_plan.h) and the per-thread source
// (thread_sampler.h).
#pragma once

#include "sampling/event_encoding.h"
#include "sampling/sampling_plan.h"
#include "sampling/thread_sampler.h"
