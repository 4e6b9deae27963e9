"""``ssh://[user@]host[:port]/path/glob``: parse it, and build the ssh command lines (pure, no I/O).

Remote text is data: every literal part of the path is quoted with ``shlex.quote``; only the glob
characters ``*``, ``?`` and a simple ``[...]`` class reach the remote shell unquoted. Scripts run
under ``sh -c`` whatever the remote login shell is. ``ssh://host/~/logs/*.out`` is relative to
the remote home directory.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

import regex

SCHEME = "ssh://"
LOG_SUFFIXES = (".out", ".log", ".err", ".txt")  # as for a local directory
HEADER = b"pdwatch-tail "  # first stdout line of a tail script: "pdwatch-tail START INODE"

_USER = regex.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*")
_HOST = regex.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*|\[[0-9A-Fa-f:.%A-Za-z]+\]")
_CLASS = regex.compile(r"\[!?\^?[A-Za-z0-9_.-]+\]")  # [0-3], [!a-z]: nothing a shell could misread


def is_ssh(arg: str) -> bool:
    return arg.lower().startswith(SCHEME)


@dataclass(frozen=True)
class SshSpec:
    arg: str  # as given
    destination: str  # [user@]host, as ssh takes it
    host: str
    port: int | None
    path: str  # absolute, or relative to the remote home (from /~/...)

    @property
    def name(self) -> str:
        """``host:/path/glob`` (``host:~/path`` for a home-relative one)."""
        return source_name(self.host, self.path)

    def ssh_argv(self, script: str, *, ssh: str = "ssh", connect_timeout: int = 10) -> list[str]:
        """The ssh command running ``script`` under ``sh -c`` remotely: never prompts, no stdin, no tty."""
        argv = [ssh, "-n", "-T", "-o", "BatchMode=yes", "-o", f"ConnectTimeout={connect_timeout}",
                "-o", "ServerAliveInterval=15", "-o", "ServerAliveCountMax=3"]
        if self.port is not None:
            argv += ["-p", str(self.port)]
        return argv + ["--", self.destination, "sh -c " + shlex.quote(script)]


def source_name(host: str, path: str) -> str:
    return f"{host}:{path if path.startswith('/') else '~/' + path}"


def parse_ssh(arg: str) -> SshSpec:
    """Parse an ``ssh://`` argument; ValueError (one line, naming it) when it is not usable."""
    usage = "expected ssh://[user@]host[:port]/path/glob"
    rest = arg[len(SCHEME):]
    netloc, slash, path = rest.partition("/")
    if not slash or not path.strip("/"):
        raise ValueError(f"{arg}: no remote path ({usage})")
    user, _, hostport = netloc.rpartition("@")
    host, port = hostport, None
    m = regex.fullmatch(r"(.+?):(\d+)", hostport)
    if m and not hostport.endswith("]"):
        host, port = m[1], int(m[2])
    if not _HOST.fullmatch(host) or (user and not _USER.fullmatch(user)) or (port is not None and not 0 < port < 65536):
        raise ValueError(f"{arg}: bad user, host or port ({usage})")
    path = path[2:] if path.startswith("~/") else "/" + path
    if "\0" in path or "\n" in path:
        raise ValueError(f"{arg}: the path holds a NUL or newline")
    host = host.strip("[]")  # ssh takes an IPv6 address bare
    return SshSpec(arg, f"{user}@{host}" if user else host, host, port, path)


def shell_glob(pattern: str) -> str:
    """``pattern`` as one shell word: literal runs quoted, glob characters left to the shell."""
    out: list[str] = []
    literal: list[str] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        m = _CLASS.match(pattern, i) if ch == "[" else None
        if ch in "*?" or m:
            if literal:
                out.append(shlex.quote("".join(literal)))
                literal = []
            out.append(m[0] if m else ch)
            i = m.end() if m else i + 1
        else:
            literal.append(ch)
            i += 1
    if literal:
        out.append(shlex.quote("".join(literal)))
    return "".join(out)


def list_script(pattern: str) -> str:
    """Remote files the glob stands for (a directory: its log files), each printed followed by NUL."""
    suffixes = " ".join(f'"$p"/*{s}' for s in LOG_SUFFIXES)
    return (f"set +f; for p in {shell_glob(pattern)}; do "
            f"if [ -d \"$p\" ]; then for f in {suffixes}; do [ -f \"$f\" ] && printf '%s\\000' \"$f\"; done; "
            f"elif [ -f \"$p\" ]; then printf '%s\\000' \"$p\"; fi; done; exit 0")


def tail_script(path: str, offset: int, inode: str | None, *, follow: bool) -> str:
    """Print ``pdwatch-tail START INODE`` then the file from byte START (``tail -c +N [-F]``).

    START is ``offset`` unless the file is now shorter or another inode (truncated or replaced
    while we were away): then 0, and the reader starts a new generation.
    """
    return (f"set -f; f={shlex.quote(path)}; o={int(offset)}; i={shlex.quote(inode or '')}; n=-; "
            "if [ -f \"$f\" ]; then set -- $(ls -di -- \"$f\"); n=$1; s=$(($(wc -c < \"$f\"))); "
            "if [ \"$s\" -lt \"$o\" ] || { [ -n \"$i\" ] && [ \"$n\" != \"$i\" ]; }; then o=0; fi; "
            "elif [ \"$o\" -gt 0 ]; then o=0; fi; "
            f"printf '{HEADER.decode()}%s %s\\n' \"$o\" \"$n\"; "
            f"exec tail -c +$((o+1)) {'-F ' if follow else ''}-- \"$f\"")
