// `ophost pack check`: the run check of one op in a forked child (run_check_isolated). The child runs the check
// (run_check, pack_check_run.cpp) and sends each report entry to the parent through a pipe as soon as it is
// made, with the sample and stage it is in, so a crash (a signal) or a hang (killed after --timeout) is reported
// as a finding naming the op and the sample, and the check goes on with the next op.
#include "pack_check_internal.hpp"

#include <ophost/error.hpp>

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <sstream>

namespace ophost::cli::pack {

namespace {

// Records on the pipe: one kind byte, then three length-prefixed strings. Kinds: the report's entry kinds,
// 'S' (sample, stage: what the child is about to do) and 'D' (done).
constexpr char kStage = 'S';
constexpr char kDone = 'D';

void write_all(int fd, const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) _exit(3);  // the parent is gone
    p += w;
    n -= static_cast<size_t>(w);
  }
}

void send(int fd, char kind, const std::string& a = "", const std::string& b = "", const std::string& c = "") {
  std::string rec(1, kind);
  for (const std::string* s : {&a, &b, &c}) {
    uint32_t n = static_cast<uint32_t>(s->size());
    rec.append(reinterpret_cast<const char*>(&n), sizeof n);
    rec += *s;
  }
  write_all(fd, rec.data(), rec.size());
}

// Parses complete records from the front of `buf`; leaves an incomplete tail.
template <class F>
void parse_records(std::string& buf, F&& on_record) {
  size_t pos = 0;
  while (true) {
    size_t p = pos + 1;
    std::string fields[3];
    bool complete = p <= buf.size();
    for (int f = 0; f < 3 && complete; ++f) {
      uint32_t n = 0;
      if (p + sizeof n > buf.size()) { complete = false; break; }
      std::memcpy(&n, buf.data() + p, sizeof n);
      p += sizeof n;
      if (p + n > buf.size()) { complete = false; break; }
      fields[f] = buf.substr(p, n);
      p += n;
    }
    if (!complete) break;
    on_record(buf[pos], fields[0], fields[1], fields[2]);
    pos = p;
  }
  buf.erase(0, pos);
}

[[noreturn]] void child_main(int fd, const OpSchema& op, const std::string& label, const RunSpec& spec) {
  // Fatal signals end the child with that signal, so the parent names it ("crashed (SIGSEGV)"), also where a
  // sanitizer runtime installed handlers that would print a report and exit with status 1 instead.
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL}) ::signal(sig, SIG_DFL);
  Report report;
  report.forward_to([fd](const Entry& e) { send(fd, static_cast<char>(e.kind), e.where, e.what, e.fix); });
  try {
    run_check(op, label, spec, report, [fd](const std::string& sample, const std::string& stage) {
      send(fd, kStage, sample, stage);
    });
  } catch (const std::exception& e) {
    report.finding(label, std::string("the run check stopped: ") + e.what(),
                   "an exception escaped from the pack into the host: catch it in the pack and return a status");
  }
  send(fd, kDone);
  std::fflush(nullptr);  // what the pack printed
  _exit(0);  // no destructors or atexit handlers of the parent's state
}

std::string signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGABRT: return "SIGABRT";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGTRAP: return "SIGTRAP";
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    default: return "signal " + std::to_string(sig);
  }
}

// "30", "0.5"
std::string seconds(double s) {
  std::ostringstream out;
  out << s;
  return out.str();
}

struct ChildEnd {
  bool done = false;
  bool timed_out = false;
  int status = 0;
  std::string sample = "before the first sample", stage;
};

// Reads the child's records into `report` until it exits, or kills it after `timeout_s`.
ChildEnd follow_child(pid_t pid, int fd, double timeout_s, Report& report) {
  ChildEnd end;
  std::string buf;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      end.timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    pollfd p{fd, POLLIN, 0};
    int n = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;
    char chunk[4096];
    ssize_t got = ::read(fd, chunk, sizeof chunk);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;  // EOF: the child exited (or closed the pipe)
    buf.append(chunk, static_cast<size_t>(got));
    parse_records(buf, [&](char kind, std::string& a, std::string& b, std::string& c) {
      if (kind == kStage) {
        end.sample = std::move(a);
        end.stage = std::move(b);
      } else if (kind == kDone) {
        end.done = true;
      } else {
        report.add({static_cast<Entry::Kind>(kind), std::move(a), std::move(b), std::move(c)});
      }
    });
  }
  while (::waitpid(pid, &end.status, 0) < 0 && errno == EINTR) {
  }
  return end;
}

void report_child_end(const ChildEnd& end, const OpSchema& op, const std::string& label, const RunSpec& spec,
                      Report& report) {
  const std::string on = " on sample " + end.sample + (end.stage.empty() ? "" : " (in " + end.stage + ")");
  if (end.timed_out) {
    report.finding(label, "op " + op_name(op) + " did not finish within " + seconds(spec.timeout_s) + " s" + on +
                              "; killed",
                   "make sure compute terminates for every input infer accepts (or pass a larger --timeout if it is "
                   "just slow on this sample)");
  } else if (WIFSIGNALED(end.status)) {
    report.finding(label, "op " + op_name(op) + " crashed (" + signal_name(WTERMSIG(end.status)) + ")" + on,
                   "run the op under a debugger or AddressSanitizer on this sample (ophost pack check --op " +
                       op_name(op) + " ...); a write outside a buffer or a bad pointer is the usual cause");
  } else if (!end.done) {
    report.finding(label, "op " + op_name(op) + " ended the process (exit status " +
                              std::to_string(WIFEXITED(end.status) ? WEXITSTATUS(end.status) : -1) + ")" + on,
                   "never call exit() or abort() in a pack: return an error status (C++: throw oph::Error)");
  }
}

}  // namespace

void run_check_isolated(const OpSchema& op, const std::string& label, const RunSpec& spec, Report& report) {
  int fds[2];
  if (::pipe(fds) != 0) throw Error(Code::kInternal, std::string("pack check: pipe() failed: ") + std::strerror(errno));
  std::cout.flush();
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw Error(Code::kInternal, std::string("pack check: fork() failed: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::close(fds[0]);
    child_main(fds[1], op, label, spec);
  }
  ::close(fds[1]);
  ChildEnd end = follow_child(pid, fds[0], spec.timeout_s, report);
  ::close(fds[0]);
  report_child_end(end, op, label, spec, report);
}

}  // namespace ophost::cli::pack
