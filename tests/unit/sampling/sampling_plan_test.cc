#include "sampling/sampling_plan.h"

#include <errno.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/perf_event.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>

#include "sample_signals.h"
#include "sampling/thread_sampler.h"

namespace hybridprof::sampling {
namespace {

EventSpec encoded(const std::string& name) {
  EventSpec spec;
  std::string error;
  EXPECT_TRUE(encode_event(name, &spec, &error)) << error;
  return spec;
}

SamplingRequest request_for(const std::string& name, uint64_t value = 1000, bool frequency = true) {
  SamplingRequest request;
  request.event = encoded(name);
  request.value = value;
  request.frequency = frequency;
  return request;
}

// The test's own answer to "can this machine sample this generic event?",
// asked without the code under test: errno of perf_event_open, 0 if it opened.
int raw_open_errno(uint32_t type, uint64_t config) {
  perf_event_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = type;
  attr.config = config;
  attr.sample_period = 1000000;
  attr.disabled = 1;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  long fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
  if (fd < 0) return errno;
  close(int(fd));
  return 0;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(PlanSampling, CyclesKeptWhereSupportedElseCpuClockWithNotice) {
  int cycles_errno = raw_open_errno(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES);
  int clock_errno = raw_open_errno(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK);
  if (cycles_errno == EACCES || cycles_errno == EPERM || cycles_errno == ENOSYS)
    GTEST_SKIP() << "perf_event_open is refused here; the seccomp tests cover refusal";
  SamplingPlan plan = plan_sampling(request_for("cycles"));
  EXPECT_EQ(plan.mechanism, Mechanism::kPerfEvent);
  EXPECT_TRUE(plan.frequency);
  EXPECT_EQ(plan.value, 1000u);
  if (cycles_errno == 0) {
    EXPECT_EQ(plan.event.type, uint32_t(PERF_TYPE_HARDWARE));
    EXPECT_EQ(plan.event.config, uint64_t(PERF_COUNT_HW_CPU_CYCLES));
    EXPECT_EQ(plan.notice, "");
  } else {
    ASSERT_EQ(clock_errno, 0) << "cpu-clock does not open either";
    EXPECT_EQ(plan.event.name, "cpu-clock");
    EXPECT_EQ(plan.event.type, uint32_t(PERF_TYPE_SOFTWARE));
    EXPECT_EQ(plan.event.config, uint64_t(PERF_COUNT_SW_CPU_CLOCK));
    EXPECT_TRUE(plan.event.software_clock);
    EXPECT_EQ(plan.notice, "hybridprof: event 'cycles' is not supported on this CPU; sampling cpu-clock instead");
  }
}

TEST(PlanSampling, HardwareCountPeriodFallsBackToOneMillisecond) {
  if (raw_open_errno(PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS) != ENOENT)
    GTEST_SKIP() << "instructions is not missing on this machine";
  SamplingPlan plan = plan_sampling(request_for("instructions", 2000000, /*frequency=*/false));
  EXPECT_EQ(plan.mechanism, Mechanism::kPerfEvent);
  EXPECT_EQ(plan.event.config, uint64_t(PERF_COUNT_SW_CPU_CLOCK));
  EXPECT_FALSE(plan.frequency);
  EXPECT_EQ(plan.value, 1000000u);
  EXPECT_TRUE(contains(plan.notice, "'instructions'")) << plan.notice;
  EXPECT_TRUE(contains(plan.notice, "every 1 ms instead of every 2000000 events")) << plan.notice;
}

TEST(PlanSampling, CpuClockNeedsNoNotice) {
  if (raw_open_errno(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK) != 0) GTEST_SKIP() << "cpu-clock does not open here";
  SamplingPlan plan = plan_sampling(request_for("cpu-clock"));
  EXPECT_EQ(plan.mechanism, Mechanism::kPerfEvent);
  EXPECT_EQ(plan.event.config, uint64_t(PERF_COUNT_SW_CPU_CLOCK));
  EXPECT_EQ(plan.value, 1000u);
  EXPECT_TRUE(plan.frequency);
  EXPECT_EQ(plan.notice, "");
}

TEST(PlanSampling, SoftwareClockAboveTheKernelSampleRateStillOpens) {
  // In frequency mode the kernel would say EINVAL above perf_event_max_sample_rate;
  // a software clock is opened with a period instead, so the request stands.
  if (raw_open_errno(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK) != 0) GTEST_SKIP() << "cpu-clock does not open here";
  SamplingPlan plan = plan_sampling(request_for("cpu-clock", 200000));
  EXPECT_EQ(plan.mechanism, Mechanism::kPerfEvent);
  EXPECT_EQ(plan.event.config, uint64_t(PERF_COUNT_SW_CPU_CLOCK));
  EXPECT_EQ(plan.value, 200000u);
  EXPECT_EQ(plan.notice, "");
}

uint64_t read_max_sample_rate() {
  int fd = open("/proc/sys/kernel/perf_event_max_sample_rate", O_RDONLY);
  if (fd < 0) return 0;
  char text[32] = {};
  ssize_t n = read(fd, text, sizeof text - 1);
  close(fd);
  return n > 0 ? strtoull(text, nullptr, 10) : 0;
}

TEST(PlanSampling, CountingEventFrequencyIsClampedToTheKernelLimit) {
  // page-faults is a counting (non-clock) event that opens even without a PMU.
  uint64_t limit = read_max_sample_rate();
  if (limit == 0 || raw_open_errno(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS) != 0)
    GTEST_SKIP() << "no page-faults event or no readable perf_event_max_sample_rate";
  SamplingPlan plan = plan_sampling(request_for("page-faults", limit * 2));
  EXPECT_EQ(plan.mechanism, Mechanism::kPerfEvent);
  EXPECT_EQ(plan.event.config, uint64_t(PERF_COUNT_SW_PAGE_FAULTS));
  EXPECT_LE(plan.value, limit);  // the kernel may lower the limit meanwhile, never raise it past our read
  EXPECT_TRUE(contains(plan.notice, "perf_event_max_sample_rate")) << plan.notice;
}

TEST(PlanSampling, ForcedTimer) {
  SamplingRequest request = request_for("cpu-clock");
  request.force_timer = true;
  SamplingPlan plan = plan_sampling(request);
  EXPECT_EQ(plan.mechanism, Mechanism::kPosixTimer);
  EXPECT_EQ(plan.timer_interval_ns, 1000000u);
  EXPECT_EQ(plan.event.config, uint64_t(PERF_COUNT_SW_CPU_CLOCK));
  EXPECT_EQ(plan.notice, "");

  SamplingRequest cycles = request_for("cycles");
  cycles.force_timer = true;
  plan = plan_sampling(cycles);
  EXPECT_EQ(plan.mechanism, Mechanism::kPosixTimer);
  EXPECT_EQ(plan.event.name, "cpu-clock");
  EXPECT_EQ(plan.timer_interval_ns, 1000000u);
  EXPECT_TRUE(contains(plan.notice, "'cycles'")) << plan.notice;
}

TEST(PlanSampling, TimerIntervals) {
  SamplingRequest period = request_for("task-clock", 250000, /*frequency=*/false);
  period.force_timer = true;
  SamplingPlan plan = plan_sampling(period);
  EXPECT_EQ(plan.event.config, uint64_t(PERF_COUNT_SW_TASK_CLOCK));
  EXPECT_EQ(plan.timer_interval_ns, 250000u);

  SamplingRequest fast = request_for("cpu-clock", 1000000);
  fast.force_timer = true;
  EXPECT_EQ(plan_sampling(fast).timer_interval_ns, 10000u);  // the 10 µs floor

  SamplingRequest count = request_for("cycles", 100000, /*frequency=*/false);
  count.force_timer = true;
  plan = plan_sampling(count);
  EXPECT_EQ(plan.timer_interval_ns, 1000000u);
  EXPECT_FALSE(plan.frequency);
  EXPECT_EQ(plan.value, 1000000u);
  EXPECT_TRUE(contains(plan.notice, "every 1 ms instead of every 100000 events")) << plan.notice;
}

// --- Refusal: a child process whose perf_event_open always fails with `err`.

#if defined(__x86_64__)
constexpr uint32_t kAuditArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr uint32_t kAuditArch = AUDIT_ARCH_AARCH64;
#else
constexpr uint32_t kAuditArch = 0;
#endif

bool deny_perf_event_open(int err) {
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kAuditArch, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_perf_event_open, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (uint32_t(err) & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog program;
  program.len = sizeof filter / sizeof filter[0];
  program.filter = filter;
  return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 && prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) == 0;
}

// Child exit codes: what went wrong first.
enum ChildStatus {
  kChildOk = 0,
  kSeccompFailed = 10,
  kFilterIneffective,
  kWrongMechanism,
  kWrongNotice,
  kStartFailed,
  kTooFewSamples,
};

const char* describe(int status) {
  switch (status) {
    case kChildOk: return "ok";
    case kSeccompFailed: return "could not install the seccomp filter";
    case kFilterIneffective: return "perf_event_open still worked under the filter";
    case kWrongMechanism: return "plan was not kPosixTimer";
    case kWrongNotice: return "notice did not say what happened";
    case kStartFailed: return "ThreadSampler::start failed with the timer plan";
    case kTooFewSamples: return "too few timer samples";
    default: return "unexpected exit";
  }
}

// Runs in the child; must not use gtest assertions. The plan is then used for
// real: refusal must still give samples.
int child_plans_under_denial(int err, const SamplingRequest& request, const char* notice_part) {
  if (!deny_perf_event_open(err)) return kSeccompFailed;
  if (raw_open_errno(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK) != err) return kFilterIneffective;
  SamplingPlan plan = plan_sampling(request);
  if (plan.mechanism != Mechanism::kPosixTimer) return kWrongMechanism;
  if (!contains(plan.notice, notice_part) || !contains(plan.notice, "POSIX CPU-time timers")) return kWrongNotice;
  test_support::install_counting_handler();
  test_support::counts().reset();
  ThreadSampler sampler;
  test_support::set_thread_sampler(&sampler);
  std::string error;
  if (!sampler.start(plan, test_support::sample_signal(), &error)) return kStartFailed;
  // 50 intervals of 1 ms CPU time, within a generous budget (see spin_cpu_until).
  test_support::spin_cpu_until([] { return test_support::counts().owned_weight.load() >= 50; }, 3.0);
  sampler.stop();
  if (test_support::counts().owned_weight.load() < 50) return kTooFewSamples;
  return kChildOk;
}

void expect_child(int err, const SamplingRequest& request, const char* notice_part) {
  if (kAuditArch == 0) GTEST_SKIP() << "no seccomp arch constant for this architecture";
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) _exit(child_plans_under_denial(err, request, notice_part));
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "child died, status " << status;
  EXPECT_EQ(WEXITSTATUS(status), kChildOk) << describe(WEXITSTATUS(status));
}

class PlanSamplingRefused : public ::testing::TestWithParam<int> {};

TEST_P(PlanSamplingRefused, FallsBackToPosixTimers) {
  expect_child(GetParam(), request_for("cycles"), "perf_event_open refused");
}

INSTANTIATE_TEST_SUITE_P(Errnos, PlanSamplingRefused, ::testing::Values(EACCES, EPERM, ENOSYS),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::string(info.param == EACCES ? "EACCES" : info.param == EPERM ? "EPERM" : "ENOSYS");
                         });

TEST(PlanSampling, NoEventOpensAtAllFallsBackToTimers) {
  // ENOENT for everything: cycles is "not supported", then cpu-clock fails too.
  expect_child(ENOENT, request_for("cycles"), "'cycles' is not supported");
}

// Which plans draw random periods, and what the archive will say.
TEST(PlanSampling, PeriodsAreRandomizedWhereAPeriodCanBeSet) {
  SamplingRequest clock = request_for("cpu-clock");
  const SamplingPlan random = plan_sampling(clock);
  if (random.mechanism == Mechanism::kPerfEvent) {
    EXPECT_TRUE(random.randomized);
    EXPECT_EQ(random.perf_period(), 1000000u) << "1 kHz of a clock: 1 ms in ns";
    EXPECT_TRUE(contains(periods_text(random), "randomized")) << periods_text(random);
  }
  clock.fixed_period = true;
  const SamplingPlan fixed = plan_sampling(clock);
  EXPECT_FALSE(fixed.randomized);
  if (fixed.mechanism == Mechanism::kPerfEvent) {
    EXPECT_STREQ(periods_text(fixed), "fixed");
  }
  // Timers: their signals come at ticks, whatever the interval.
  SamplingRequest timer = request_for("cpu-clock");
  timer.force_timer = true;
  const SamplingPlan timed = plan_sampling(timer);
  EXPECT_FALSE(timed.randomized);
  EXPECT_TRUE(contains(periods_text(timed), "ticks")) << periods_text(timed);
  // A hardware event at -F: the kernel's frequency mode, which sets its own periods.
  SamplingPlan hardware_frequency;
  hardware_frequency.event = encoded("cycles");
  hardware_frequency.value = 1000;
  hardware_frequency.frequency = true;
  EXPECT_EQ(hardware_frequency.perf_period(), 0u);
  EXPECT_TRUE(contains(periods_text(hardware_frequency), "frequency mode")) << periods_text(hardware_frequency);
  hardware_frequency.frequency = false;  // -c 1000000
  hardware_frequency.value = 1000000;
  EXPECT_EQ(hardware_frequency.perf_period(), 1000000u);
}

// A draw is a system call: a clock draws at every sample up to 250 Hz and
// at every 4th at most above (draws stay under 250 a second); an event
// whose period is a count, not a time, at every 4th.
TEST(PlanSampling, APeriodIsDrawnAtEverySampleAtLowRatesAndEveryFewAtHighOnes) {
  SamplingPlan clock;
  clock.event = encoded("cpu-clock");
  clock.frequency = true;
  const std::pair<uint64_t, uint32_t> hz_and_samples_per_draw[] = {
      {1, 1}, {100, 1}, {250, 1}, {500, 2}, {999, 3}, {1000, 4}, {4000, 4}, {100000, 4}};
  for (const auto& [hz, per_draw] : hz_and_samples_per_draw) {
    clock.value = hz;
    EXPECT_EQ(clock.samples_per_draw(), per_draw) << hz << " Hz";
  }
  clock.frequency = false;  // -c 10000000: 10 ms of the clock
  clock.value = 10000000;
  EXPECT_EQ(clock.samples_per_draw(), 1u);
  SamplingPlan cycles;
  cycles.event = encoded("cycles");
  cycles.frequency = false;
  cycles.value = 1000;
  EXPECT_EQ(cycles.samples_per_draw(), 4u);
}

// A thread's switch rate is read about every 8 ms of its CPU time: every
// 8th signal at 1 kHz, every signal at 125 Hz and below (at every 8th, a
// yielding thread sampled at 1 Hz kept its perf event for 16 s of CPU);
// every 8th of an event whose period is no time.
TEST(SamplingPlan, TheSwitchRateIsCheckedAbout8msOfCpuApart) {
  SamplingPlan clock;
  clock.event = encoded("cpu-clock");
  clock.frequency = true;
  const std::pair<uint64_t, uint32_t> hz_and_signals[] = {{1, 1}, {20, 1}, {125, 1}, {250, 2}, {1000, 8}, {100000, 8}};
  for (const auto& [hz, signals] : hz_and_signals) {
    clock.value = hz;
    EXPECT_EQ(clock.signals_per_switch_check(), signals) << hz << " Hz";
  }
  SamplingPlan cycles;
  cycles.event = encoded("cycles");
  cycles.frequency = false;
  cycles.value = 1000000;
  EXPECT_EQ(cycles.signals_per_switch_check(), 8u);
}

}  // namespace
}  // namespace hybridprof::sampling
