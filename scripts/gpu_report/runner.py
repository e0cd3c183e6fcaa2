"""Runs the report's commands under one deadline, keeps their logs, and rewrites the report after every
measurement, so a run stopped at a time limit leaves everything measured so far."""
import json
import os
import subprocess
import time


class Result:
    def __init__(self, rc, output, seconds, timed_out=False, skipped=""):
        self.rc, self.output, self.seconds, self.timed_out, self.skipped = rc, output, seconds, timed_out, skipped

    @property
    def ok(self):
        return self.rc == 0 and not self.timed_out and not self.skipped

    def why(self):
        """One line saying why a command gave no result."""
        if self.skipped:
            return self.skipped
        if self.timed_out:
            return f"stopped at its time limit after {self.seconds:.0f} s"
        lines = [line for line in self.output.strip().splitlines() if line.strip()]
        return f"exit status {self.rc}: " + (lines[-1][:300] if lines else "no output")


class Runner:
    """Subprocesses with a per-command cap and a deadline for the whole report (0: none)."""

    def __init__(self, out_dir, time_limit_s, env):
        self.out_dir, self.env = out_dir, env
        self.started = time.monotonic()
        self.deadline = self.started + time_limit_s if time_limit_s > 0 else None
        os.makedirs(os.path.join(out_dir, "logs"), exist_ok=True)
        os.makedirs(os.path.join(out_dir, "work"), exist_ok=True)

    def elapsed(self):
        return time.monotonic() - self.started

    def remaining(self):
        return float("inf") if self.deadline is None else self.deadline - time.monotonic()

    def work(self, name):
        return os.path.join(self.out_dir, "work", name)

    def run(self, log_name, argv, cap_s, extra_env=None):
        timeout = min(cap_s or float("inf"), self.remaining())
        if timeout < 2:
            return Result(None, "", 0.0, skipped="not run: the report's time limit was reached")
        env = dict(self.env, **(extra_env or {}))
        start = time.monotonic()
        try:
            done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                                  timeout=None if timeout == float("inf") else timeout)
            result = Result(done.returncode, done.stdout.decode(errors="replace"), time.monotonic() - start)
        except subprocess.TimeoutExpired as e:
            output = (e.output or b"").decode(errors="replace")
            result = Result(None, output, time.monotonic() - start, timed_out=True)
        except OSError as e:
            result = Result(None, str(e), time.monotonic() - start)
        with open(os.path.join(self.out_dir, "logs", log_name + ".log"), "w") as log:
            log.write("$ " + " ".join(argv) + "\n" + result.output)
            log.write(f"\n[{result.seconds:.1f} s, {'timed out' if result.timed_out else f'exit {result.rc}'}]\n")
        return result


def write_atomically(path, text):
    with open(path + ".tmp", "w") as out:
        out.write(text)
    os.replace(path + ".tmp", path)


class Report:
    """The report's state: one entry per section, saved as JSON and rendered as markdown on every change."""

    def __init__(self, out_dir, render):
        self.out_dir, self.render = out_dir, render
        self.data = {"sections": {}}

    def section(self, name):
        return self.data["sections"].setdefault(name, {"status": "running"})

    def save(self):
        write_atomically(os.path.join(self.out_dir, "report.json"), json.dumps(self.data, indent=1) + "\n")
        write_atomically(os.path.join(self.out_dir, "report.md"), self.render(self.data))


def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None
