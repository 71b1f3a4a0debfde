"""Which files a build reads, and reading them: the trust boundary of the policy directory.

A pull request controls every byte under ``policies/`` and every kind of directory entry there.
Only *regular files inside the policy directory* are policy: a symbolic link (dangling, to
``/etc/passwd`` or to another team's file), a hard link (git never checks one out), a FIFO, a
device or socket, or a path that resolves
outside the policy directory is a LOAD009 error naming the path and never its content; a file
that cannot be read is an error too, so the build fails instead of silently dropping the team
(and deleting its Namespaces from ``out/``). Files are opened with ``O_NOFOLLOW | O_NONBLOCK``
and checked again with ``fstat`` on the open descriptor, so swapping a file for a link or a FIFO
between the listing and the read changes nothing.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from compiler.diagnostics import Diagnostic, Location, Rule, Scope, define
from compiler.load.paths import display_path

# The reading of files, apart from their parsing (compiler.load.source), so that a command answered
# from the store imports no YAML library (start-up, issue 21: ruamel and PyYAML were ~25 ms of it).
MAX_FILE_BYTES = 1 << 20  # 1 MiB: a policy file is a page, not a data dump
LOAD_MISSING = define(
    "LOAD008",
    "The policy directory has a fleet file (fleet.yaml) and only .yaml files under teams/.",
    "policies/fleet.yaml\npolicies/teams/ml.yaml",
    "policies/teams/ml.yaml   # no fleet.yaml",
    scope=Scope.FILE,
)
LOAD_FILE = define(
    "LOAD009",
    "Policy files are regular files inside the policy directory: no symbolic or hard links, FIFOs, "
    "devices, or paths resolving outside it; a file that cannot be read fails the build.",
    "policies/teams/ml.yaml   # a regular file",
    "policies/teams/ml.yaml -> /etc/passwd   # a symbolic link",
    scope=Scope.FILE,
)

RULES: tuple[Rule, ...] = (LOAD_MISSING, LOAD_FILE)

_HINT = "commit the team file itself under policies/teams/ (a regular file, not a link or special file)"


def _kind(mode: int, links: int = 1) -> str | None:
    """What an entry is when it is not a regular file of its own (None when it is one). A hard
    link is refused too: git never checks one out, and it could share the bytes of any file."""
    if stat.S_ISREG(mode):
        return None if links <= 1 else f"a hard link ({links} names for one file)"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def entry_problem(path: Path, inside: Path) -> str | None:
    """Why ``path`` may not be read as a policy file (None when it may). ``inside`` is the
    resolved policy directory. Never reads the file."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        return f"cannot be read: {exc.strerror}"
    kind = _kind(st.st_mode, st.st_nlink)
    if kind is not None:
        return f"is {kind}; only regular files inside the policy directory are read"
    return None if _within(path, inside) else "resolves outside the policy directory"


def _within(path: Path, inside: Path) -> bool:
    try:
        path.resolve().relative_to(inside)
    except (ValueError, OSError, RuntimeError):
        return False
    return True


def read_policy_file(path: Path) -> tuple[bytes | None, str | None]:
    """The bytes of a regular file, or None and why not (never following a link, never blocking
    on a FIFO). Reads at most one byte more than the loader's size limit."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return None, "is a symbolic link; only regular files inside the policy directory are read"
        return None, f"cannot be read: {exc.strerror}"
    try:
        st = os.fstat(fd)
        kind = _kind(st.st_mode, st.st_nlink)
        if kind is not None:
            return None, f"is {kind}; only regular files inside the policy directory are read"
        chunks: list[bytes] = []
        size = 0
        # the size fstat gives first: a read of the limit allocates (and shrinks) 1 MiB per file,
        # ~0.04 s of a one-team edit's start at 5,000 teams; a file that grew meanwhile is read on
        want = min(st.st_size, MAX_FILE_BYTES) + 1
        while size <= MAX_FILE_BYTES:
            chunk = os.read(fd, min(want, MAX_FILE_BYTES + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            want = 1 << 16
        return b"".join(chunks), None
    except OSError as exc:
        return None, f"cannot be read: {exc.strerror}"
    finally:
        os.close(fd)


def discover(policy_dir: Path, display_root: Path) -> tuple[list[tuple[Path, str]], list[Diagnostic]]:
    """The files of a policy directory: ``fleet.yaml`` and ``teams/*.yaml``, sorted by name so
    that the build does not depend on directory order. Entries that are not regular files inside
    the policy directory are LOAD009 errors, never skipped."""
    diags: list[Diagnostic] = []
    files: list[tuple[Path, str]] = []
    inside = policy_dir.resolve()

    def display(p: Path) -> str:
        return display_path(p, display_root)

    def admit(p: Path, shown: str) -> None:
        problem = entry_problem(p, inside)
        if problem is None:
            files.append((p, shown))
        else:
            diags.append(LOAD_FILE.diag(f"{shown} {problem}", Location(shown), hint=_HINT))

    fleet = policy_dir / "fleet.yaml"
    if not os.path.lexists(fleet):
        diags.append(
            LOAD_MISSING.diag(
                "no fleet file: the platform's fleet.yaml is missing",
                Location(display(fleet)),
                hint=f"create {display(fleet)} with kind: Fleet (clusters, pools, departments)",
            )
        )
    else:
        admit(fleet, display(fleet))
    teams_dir = policy_dir / "teams"
    if os.path.islink(teams_dir):
        shown = display(teams_dir)
        diags.append(LOAD_FILE.diag(f"{shown} is a symbolic link; only regular files inside the policy "
                                    "directory are read", Location(shown), hint=_HINT))
    elif teams_dir.is_dir():
        shown_dir = display(teams_dir)  # resolved once: a thousand teams, a thousand resolves otherwise
        teams_inside = _within(teams_dir, inside)
        with os.scandir(teams_dir) as it:
            entries = sorted(it, key=lambda e: e.name)
        for e in entries:
            if e.name.startswith("."):
                continue
            p = teams_dir / e.name
            shown = f"{shown_dir}/{e.name}"
            if p.suffix == ".yaml" and not e.is_dir(follow_symlinks=False):
                st = e.stat(follow_symlinks=False)  # one lstat; no resolve per file
                if stat.S_ISREG(st.st_mode) and st.st_nlink == 1 and teams_inside:
                    files.append((p, shown))  # a regular file directly inside teams/
                else:
                    admit(p, shown)  # reports what it is
            elif p.suffix == ".yml" or e.is_dir(follow_symlinks=False):
                diags.append(
                    LOAD_MISSING.diag(
                        f"unexpected {'directory' if e.is_dir(follow_symlinks=False) else 'file'} {e.name!r} in teams/",
                        Location(shown),
                        hint="team files are named <team>.yaml, one per team, directly under teams/",
                    )
                )
    return files, diags


def read_inputs(policy_dir: Path, display_root: Path) -> tuple[list[tuple[str, bytes | None, bool]], list[Diagnostic]]:
    """(display path, bytes or None when unreadable, is the fleet file) of every policy file,
    with the diagnostics of the listing and the reads; an unreadable file is an error."""
    files, diags = discover(policy_dir, display_root)
    out: list[tuple[str, bytes | None, bool]] = []
    for path, shown in files:
        data, problem = read_policy_file(path)
        if problem is not None:
            diags.append(LOAD_FILE.diag(f"{shown} {problem}", Location(shown), hint=_HINT))
        out.append((shown, data, path.name == "fleet.yaml" and path.parent == policy_dir))
    return out, diags
