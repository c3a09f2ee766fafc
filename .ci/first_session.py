"""A new user's first session with an installed formctl, in an empty folder, far from any clone.

    python3 .ci/first_session.py --bin VENV/bin [--version X.Y.Z]

``VENV/bin`` holds the ``formctl`` that ``pip install formctl-*.whl`` (or pipx) put there. Each
step runs that command in a new empty folder, with a home of its own and none of the caller's
``PYTHONPATH``, ``FORMCTL_*`` or model keys, so nothing from this checkout can stand in for the
package. The steps are the ones the README promises: ``--version``, ``list`` with no forms yet,
``new`` → ``check`` → ``run --offline`` (piped, then in a terminal) → ``run --record`` →
``replay``, an example copied with ``new --example``, ``python -m formctl`` and shell completion.

The first step that does not do what it should stops the script, exit status 1, with the
command, where it ran, its exit status and the end of what it printed. Needs pexpect (the test
extra) for the terminal step.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

# The scaffolded form's questions (cli/scaffold.py's TEMPLATE) and the answers that complete it:
# its required fields, "skip" for the optional notes, "yes" to send after the read-back.
ANSWERS = [
    ("Full name", "Dana Reeve"),
    ("Email", "dana@example.org"),
    ("Topic", "question"),
    ("Notes", "skip"),
    ("Shall I send", "yes"),
]


class Failed(Exception):
    pass


class Session:
    def __init__(self, bin_dir: Path, folder: Path, home: Path) -> None:
        self.bin = bin_dir
        self.folder = folder
        self.env = {
            k: v
            for k, v in os.environ.items()
            if k != "PYTHONPATH" and not k.startswith(("FORMCTL_", "ANTHROPIC_", "OPENAI_", "VIRTUAL_ENV"))
        }
        self.env.update(HOME=str(home), PATH=f"{bin_dir}{os.pathsep}{self.env.get('PATH', '')}", SHELL="/bin/bash")
        self.env.pop("PYTHONHOME", None)

    def run(
        self, *args: str, input: str | None = None, status: int = 0, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """``formctl ARGS`` (or ``python ...`` when the first argument is ``python``) in the folder;
        fails unless it exits with ``status``."""
        if args and args[0] == "python":
            program = [str(self.bin / "python"), *args[1:]]
        else:
            program = [str(self.bin / "formctl"), *args]
        done = subprocess.run(
            program,
            cwd=self.folder,
            env={**self.env, **(env or {})},
            input=input,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if done.returncode != status:
            raise Failed(_report(program, self.folder, f"exit status {done.returncode}, expected {status}", done))
        return done

    def expect(self, done: subprocess.CompletedProcess[str], stream: str, pattern: str, why: str) -> None:
        text = getattr(done, stream)
        if not re.search(pattern, text):
            raise Failed(_report(done.args, self.folder, f"{why}: no /{pattern}/ in its {stream}", done))


def _report(program: object, folder: Path, problem: str, done: subprocess.CompletedProcess[str] | None) -> str:
    args = program if isinstance(program, list) else [str(program)]
    lines = [f"$ {' '.join(str(a) for a in args)}", f"  in {folder}", f"  {problem}"]
    if done is not None:
        for name in ("stdout", "stderr"):
            tail = (getattr(done, name) or "").strip().splitlines()[-15:]
            lines.append(f"  {name} (last {len(tail)} lines):")
            lines.extend(f"    | {line}" for line in tail)
    return "\n".join(lines)


def piped_answers() -> str:
    return "".join(answer + "\n" for _, answer in ANSWERS)


# --------------------------------------------------------------------------- the steps


def version(s: Session, expected: str | None) -> None:
    done = s.run("--version")
    s.expect(done, "stdout", r"^formctl \d", "formctl --version prints the version")
    if expected and done.stdout.split() != ["formctl", expected]:
        raise Failed(_report(done.args, s.folder, f"the version is not the wheel's {expected}", done))
    module = s.run("python", "-m", "formctl", "--version")
    if module.stdout != done.stdout:
        raise Failed(_report(module.args, s.folder, "python -m formctl is not the same command", module))


def empty_list(s: Session) -> None:
    done = s.run("list", status=1)
    lines = done.stderr.strip().splitlines()
    if len(lines) != 1 or "formctl new" not in lines[0] or "Traceback" in done.stderr:
        raise Failed(_report(done.args, s.folder, "list without forms says what to do in one line", done))


def new_check_run(s: Session) -> None:
    s.run("new", "my-form")
    s.expect(s.run("check", "my-form"), "stdout", r"full_name", "check shows the outline")
    done = s.run("run", "my-form", "--offline", input=piped_answers())
    s.expect(done, "stdout", r"is complete", "a piped chat completes the form")


def run_in_a_terminal(s: Session) -> None:
    try:
        import pexpect
    except ImportError:
        raise Failed("the terminal step needs pexpect: python3 -m pip install pexpect") from None
    command = [str(s.bin / "formctl"), "run", "my-form", "--offline"]
    child = pexpect.spawn(
        command[0],
        command[1:],
        cwd=str(s.folder),
        env={**s.env, "TERM": "xterm-256color"},
        dimensions=(30, 120),
        encoding="utf-8",
        timeout=30,
    )
    child.delaybeforesend = None
    seen: list[str] = []

    def wait_for(pattern: object) -> None:  # a regular expression, or pexpect.EOF
        while True:  # prompt-toolkit asks where the cursor is: answer "row 5"
            index = child.expect([pattern, re.escape("\x1b[6n"), pexpect.EOF, pexpect.TIMEOUT])
            seen.append(child.before or "")
            if index == 0 or (index == 2 and pattern is pexpect.EOF):
                return
            if index > 1:
                child.close(force=True)
                tail = "".join(seen)[-1500:].splitlines()[-15:]
                why = "it ended" if index == 2 else "nothing for 30 s"
                raise Failed(
                    "\n".join(
                        [
                            f"$ {' '.join(command)}  (in a terminal)",
                            f"  in {s.folder}",
                            f"  waited for /{pattern}/, but {why}; the terminal showed:",
                            *(f"    | {line}" for line in tail),
                        ]
                    )
                )
            child.send("\x1b[5;1R")

    for question, answer in ANSWERS:
        wait_for(question)
        child.send(answer + "\r")
    wait_for("is complete")
    wait_for("you ›")  # the next prompt
    child.send("/quit\r")
    wait_for(r"Done: .* is complete")
    wait_for(pexpect.EOF)
    child.close()
    if child.exitstatus != 0:
        tail = "".join(seen)[-600:]
        raise Failed(
            f"$ {' '.join(command)}  (in a terminal)\n  in {s.folder}\n  exit status {child.exitstatus} "
            f"after /quit; it showed: {tail!r}"
        )


def record_and_replay(s: Session) -> None:
    s.run("run", "my-form", "--record", "t.toml", input=piped_answers())
    if not (s.folder / "t.toml").is_file():
        raise Failed(f"formctl run my-form --record t.toml wrote no t.toml in {s.folder}")
    s.expect(s.run("replay", "t.toml"), "stdout", r"1 passed, 0 failed", "the recorded chat replays")


def example(s: Session) -> None:
    s.expect(s.run("new", "--example", "travel-claim"), "stdout", r"registered travel-claim", "the example is copied")
    s.run("check", "travel-claim")
    s.expect(s.run("list"), "stdout", r"travel-claim", "list shows the example")
    s.expect(s.run("run", "travel-claim", "--offline", input="Dana Reeve\n"), "stdout", r"Dana Reeve", "it runs")


def completion(s: Session) -> None:
    shown = s.run("--show-completion", "bash")
    s.expect(shown, "stdout", r"_FORMCTL_COMPLETE=complete_bash", "the bash completion script")
    words = {"_FORMCTL_COMPLETE": "complete_bash", "COMP_WORDS": "formctl run my", "COMP_CWORD": "2"}
    done = s.run(env=words)  # what bash's hook runs on a tab
    if done.stdout.split() != ["my-form"]:
        raise Failed(_report(done.args, s.folder, "tab completion of `formctl run my` is not my-form", done))
    s.expect(s.run("--install-completion", "bash"), "stdout", r"completion installed", "completion installs")


STEPS: list[tuple[str, Callable[[Session], None]]] = [
    ("formctl list with no forms yet says what to do", empty_list),
    ("formctl new my-form, check my-form, run my-form --offline (piped)", new_check_run),
    ("formctl run my-form --offline in a terminal", run_in_a_terminal),
    ("formctl run my-form --record t.toml, replay t.toml", record_and_replay),
    ("formctl new --example travel-claim, check, list, run", example),
    ("shell completion: --show-completion, a tab, --install-completion", completion),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", required=True, type=Path, help="the venv's bin folder with formctl in it")
    parser.add_argument("--version", help="the version formctl --version must print")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="formctl-first-session-") as top:
        folder, home = Path(top, "empty"), Path(top, "home")
        folder.mkdir()
        home.mkdir()
        if not (options.bin / "formctl").is_file():
            print(
                f"FAILED: no formctl in {options.bin} (install the wheel into that environment first)", file=sys.stderr
            )
            return 1
        session = Session(options.bin.resolve(), folder, home)
        steps = [("formctl --version, python -m formctl --version", lambda s: version(s, options.version)), *STEPS]
        for n, (title, step) in enumerate(steps, 1):
            started = time.monotonic()
            try:
                step(session)
            except Failed as failure:
                print(f"FAILED step {n}/{len(steps)}: {title}\n{failure}", file=sys.stderr)
                return 1
            print(f"ok {n}/{len(steps)}: {title} ({time.monotonic() - started:.1f}s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
