"""Serve a class: K `streamlit run app/main.py` processes behind nginx, each browser kept on its own
process by a cookie (deploy/nginx.conf.template says how). Ctrl-C or SIGTERM stops all of them.

    python deploy/serve_class.py --processes 2 --port 8500
        two app processes on 127.0.0.1:8501 and :8502, nginx on port 8500 of every address
    python deploy/serve_class.py --processes 2 --app-address 0.0.0.0 --no-proxy --trusted-proxy 10.0.0.11
        on a second machine: its app processes only, for the first machine's proxy
    python deploy/serve_class.py --processes 2 --port 8500 --backend pc2:8501 --backend pc2:8502
        on the first machine: its own two processes and the second machine's, behind one proxy

The class's teacher gets a board of every student's run (the app's "Teacher's board" page): a random
teacher key is made at start (or taken from UNROLLED_TEACHER_KEY, the same on every machine of a
class) and handed to the app processes, and the teacher's link is printed once, here, with the key to
type on another browser. The link carries a one-time code after "#" (board#code=...), which a browser never
sends, so no server's log keeps it; the first board it opens spends it, so the browser's history keeps
nothing that opens the board again (app/session/teacher_pass.py, app/widgets/teacher_link.py). The
students' statuses go to a SQLite file in the run directory, or, across machines, to the Redis server
--store names (redis://host:6379/0).

Run it with the Python that has the app's requirements (the README's .venv). Logs, pid files and
nginx's config and temporary files go to the run directory (--run-dir, else a new one in /tmp).
An app process that exits after it has served is started again on its port; nginx meanwhile sends
its students to the other processes (README, "Serving a class").
"""
from __future__ import annotations

import argparse
import os
import resource
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import tomllib
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the app's package, for the code its board checks: one definition of it
from app.session.teacher_pass import new_code  # noqa: E402, I001 - after the line that makes it importable
from deploy.nginx_conf import render  # noqa: E402 - after the line that makes it importable

# The class's settings the app processes read (app/session/class_config.py names them too).
TEACHER_KEY, STORE, RUN_DIR, STARTED = "UNROLLED_TEACHER_KEY", "UNROLLED_CLASS_STORE", "UNROLLED_RUN_DIR", \
    "UNROLLED_CLASS_STARTED"
TRUSTED_PROXIES = "UNROLLED_TRUSTED_PROXIES"  # app/widgets/network.py
MEMORY = "UNROLLED_MEMORY_MB"  # app/session/memory.py: what one process's models may hold
START_TIMEOUT = 120  # s for an app process to answer /_stcore/health (a loaded machine imports torch slowly)
STOP_TIMEOUT = 10  # s after SIGTERM before SIGKILL
OPEN_FILES = 20480  # nginx's worker_rlimit_nofile (nginx.conf.template), for the app processes too
APP_FLAGS = [
    "--server.headless", "true",  # no browser to open, no prompt on the terminal
    # A served app never reloads its source: no watcher threads, no rerun because a file changed.
    "--server.fileWatcherType", "none",
    "--server.runOnSave", "false",
    "--browser.gatherUsageStats", "false",
]


class Stop(Exception):
    """SIGINT or SIGTERM: stop everything."""


class NotReady(Exception):
    """An app process exited, or did not answer, before it served."""


def on_signal(signum, frame):
    raise Stop(signal.Signals(signum).name)


def max_upload_mb() -> int:
    """The app's upload cap (.streamlit/config.toml), which the proxy must let through."""
    with open(REPO / ".streamlit" / "config.toml", "rb") as f:
        return int(tomllib.load(f)["server"]["maxUploadSize"])


def health(host: str, port: int) -> str:
    try:
        with urllib.request.urlopen(f"http://{host}:{port}/_stcore/health", timeout=2) as r:
            return r.read().decode(errors="replace").strip()
    except OSError:
        return ""


def reachable(address: str) -> str:
    """An address to connect to a server listening on `address` (0.0.0.0 is every address)."""
    return "127.0.0.1" if address in ("0.0.0.0", "") else address


class App:
    """One `streamlit run app/main.py` process on address:port, its output in the run directory."""

    def __init__(self, address: str, port: int, run_dir: Path, class_env: dict[str, str]):
        self.address, self.port, self.run_dir, self.class_env = address, port, run_dir, class_env
        self.log = run_dir / f"app-{port}.log"
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        cmd = [sys.executable, "-m", "streamlit", "run", "app/main.py", *APP_FLAGS,
               "--server.address", self.address, "--server.port", str(self.port)]
        inherited = {name: value for name, value in os.environ.items() if name != TEACHER_KEY}  # --no-board: none
        # Few malloc arenas from the process's first thread on (app/session/memory.py: mallopt on the app's first run
        # comes after Streamlit's threads have made theirs)
        env = {"MALLOC_ARENA_MAX": str(len(os.sched_getaffinity(0))), **inherited, **self.class_env,
               "PYTHONUNBUFFERED": "1"}
        with open(self.log, "ab") as log:  # a file, not a pipe nobody reads, which would fill and block
            # Its own session: Ctrl-C reaches this script alone, which stops the processes in order.
            self.proc = subprocess.Popen(cmd, cwd=REPO, stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True, env=env)
        (self.run_dir / f"app-{self.port}.pid").write_text(f"{self.proc.pid}\n")

    def wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while health(reachable(self.address), self.port) != "ok":
            if self.proc.poll() is not None:
                raise NotReady(f"the app process on port {self.port} exited with code {self.proc.returncode} "
                               f"before it answered; its output: {self.log}")
            if time.monotonic() > deadline:
                raise NotReady(f"the app process on port {self.port} did not answer within {START_TIMEOUT} s; "
                               f"its output: {self.log}")
            time.sleep(0.2)  # polling the process's health, not standing in for it


def memory_share(processes: int) -> str:
    """UNROLLED_MEMORY_MB for each app process (app/session/memory.py: what its sessions' models may hold), as
    set in this environment, else the machine's memory shared among them: 60% of it, less 1 GB a process for
    its imports and the training steps in flight (benchmarks/README section 24), at least 512 MB."""
    if os.environ.get(MEMORY):
        return os.environ[MEMORY]
    machine_mb = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2**20
    return str(max(512, int(0.6 * machine_mb) // processes - 1024))


def start_nginx(backends: list[str], listen: str, run_dir: Path) -> subprocess.Popen:
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"  # Debian's is in /usr/sbin, off a user's PATH
    if not os.access(nginx, os.X_OK):
        raise SystemExit("nginx is missing: apt-get install nginx (./run_tests.sh installs it)")
    conf = run_dir / "nginx.conf"
    conf.write_text(render(backends, listen, run_dir, max_upload_mb() + 1))
    error_log = run_dir / "nginx-error.log"
    with open(error_log, "ab") as log:
        proc = subprocess.Popen([nginx, "-p", str(run_dir), "-c", str(conf), "-e", str(error_log)],
                                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    host, _, port = listen.rpartition(":")
    deadline = time.monotonic() + START_TIMEOUT
    while True:  # a TCP connection, not a request: a request would take a newcomer's turn
        try:
            socket.create_connection((reachable(host), int(port)), timeout=2).close()
            return proc
        except OSError:
            if proc.poll() is not None:
                raise SystemExit(f"nginx exited with code {proc.returncode}; see {error_log}") from None
            if time.monotonic() > deadline:
                raise SystemExit(f"nginx did not listen on {listen} in {START_TIMEOUT} s; see {error_log}") from None
            time.sleep(0.2)


def supervise(apps: list[App], nginx: subprocess.Popen | None) -> None:
    """Wait for a child to exit. nginx ends the class; an app process that had served is started
    again, and one that then fails to start is left out (nginx sends its browsers to the others)."""
    by_pid = {app.proc.pid: app for app in apps}
    while by_pid or nginx is not None:
        pid = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOWAIT).si_pid  # left for Popen to reap
        if nginx is not None and pid == nginx.pid:
            raise SystemExit(f"nginx exited with code {nginx.wait()}; see nginx-error.log in the run directory")
        app = by_pid.pop(pid)
        say(f"the app process on port {app.port} exited with code {app.proc.wait()}; starting it again "
            f"(its sessions are gone; their pages reconnect to the other processes)")
        app.start()
        try:
            app.wait_ready()
        except NotReady as failed:
            stop([app.proc])
            say(f"{failed}; serving without it")
            continue
        by_pid[app.proc.pid] = app


def say(text: str) -> None:
    print(f"serve_class: {text}", file=sys.stderr, flush=True)


def stop(procs: list[subprocess.Popen]) -> None:
    """SIGTERM to each, then SIGKILL to any still there after STOP_TIMEOUT."""
    for proc in procs:
        if proc.poll() is None:
            proc.terminate()
    deadline = time.monotonic() + STOP_TIMEOUT
    for proc in procs:
        try:
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--processes", type=int, default=os.cpu_count() or 1,
                   help="app processes on this machine (default: its cores, %(default)s)")
    p.add_argument("--port", type=int, default=8500, help="the port students open (default %(default)s)")
    p.add_argument("--listen", default="0.0.0.0", help="the address nginx listens on (default: every address)")
    p.add_argument("--app-ports", type=int, nargs="+", metavar="PORT",
                   help="this machine's app ports, one per process (default: the ports after --port)")
    p.add_argument("--app-address", default="127.0.0.1",
                   help="the address app processes listen on (127.0.0.1; this machine's network address when\n"
                        "another machine's proxy serves them)")
    p.add_argument("--backend", action="append", default=[], metavar="HOST:PORT",
                   help="an app process on another machine, served by this proxy too (repeat for each)")
    p.add_argument("--no-proxy", action="store_true", help="start the app processes only, no nginx")
    p.add_argument("--trusted-proxy", action="append", default=[], metavar="ADDRESS",
                   help="with --no-proxy: the address the proxy's machine connects from, whose X-Forwarded-For\n"
                        "names each student's address (the teacher key's tries and the lab store count by it)")
    p.add_argument("--run-dir", type=Path, help="logs, pid files, nginx's config (default: a new directory in /tmp)")
    p.add_argument("--no-board", action="store_true",
                   help="hold no class: no teacher key, no board, nothing published (the same app, as before\n"
                        "issue 32: benchmarks/load_board.py measures the board's cost against it)")
    p.add_argument("--store", metavar="URL",
                   help="where the class's statuses live: redis://host:6379/0 across machines (every machine of\n"
                        "the class names the same); default: class.db, SQLite, in the run directory")
    args = p.parse_args()
    if args.app_ports is None:
        args.app_ports = [args.port + 1 + i for i in range(args.processes)]
    elif len(args.app_ports) != args.processes:
        p.error(f"--app-ports lists {len(args.app_ports)} ports for --processes {args.processes}")
    if not args.app_ports and (args.no_proxy or not args.backend):
        p.error("nothing to serve: no app processes here and no --backend")
    return args


def raise_open_files() -> None:
    """The open-files limit up to the hard one, for this script's children: an app process holds a socket a
    websocket nginx passes it, and the usual soft limit of 1,024 is below what nginx lets through."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = OPEN_FILES if hard == resource.RLIM_INFINITY else min(OPEN_FILES, hard)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))


def main() -> None:
    args = parse_args()
    raise_open_files()
    run_dir = args.run_dir or Path(tempfile.mkdtemp(prefix="unrolled-class-"))
    run_dir.mkdir(parents=True, exist_ok=True)
    run_dir.chmod(0o711)  # nginx's workers (nobody, when started as root) make their temporary files in it
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    key = None if args.no_board else os.environ.get(TEACHER_KEY) or secrets.token_urlsafe(16)  # 128 random bits
    class_env = {RUN_DIR: str(run_dir), STARTED: str(int(time.time())), **({TEACHER_KEY: key} if key else {}),
                 **({TRUSTED_PROXIES: ",".join(args.trusted_proxy)} if args.trusted_proxy else {}),
                 **({STORE: args.store} if args.store else {}), MEMORY: memory_share(len(args.app_ports))}
    apps = [App(args.app_address, port, run_dir, class_env) for port in args.app_ports]
    nginx = None
    try:
        for app in apps:
            app.start()
        for app in apps:
            app.wait_ready()
        served = [f"{reachable(args.app_address)}:{app.port}" for app in apps] + args.backend
        if not args.no_proxy:
            nginx = start_nginx(served, f"{args.listen}:{args.port}", run_dir)
        where = "no proxy" if args.no_proxy else f"http://{reachable(args.listen)}:{args.port}/"
        print(f"serve_class: serving {where} from {', '.join(served)}; run directory {run_dir}; "
              f"Ctrl-C stops it", flush=True)
        if key is not None and not args.no_proxy:  # printed here only: the teacher's, never the students'
            print(f"serve_class: the teacher's board: {where}board#code={new_code(key, time.time())}", flush=True)
            print(f"serve_class: the link opens the board once; on another browser, type the teacher key {key}",
                  flush=True)
        elif key is not None and TEACHER_KEY not in os.environ:  # the proxy's machine must give its processes this key
            print(f"serve_class: this class's teacher key: {key} (start the proxy's serve_class.py with "
                  f"{TEACHER_KEY} set to it)", flush=True)
        supervise(apps, nginx)
    except NotReady as failed:
        raise SystemExit(f"serve_class: {failed}") from None
    except Stop as signalled:
        say(f"{signalled}, stopping")
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not cut the stopping short
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        stop(([nginx] if nginx else []) + [app.proc for app in apps if app.proc is not None])
        for kept in ("class.db", "class.db-wal", "class.db-shm"):  # the class's statuses: nothing kept after it
            (run_dir / kept).unlink(missing_ok=True)


if __name__ == "__main__":
    main()
