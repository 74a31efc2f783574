"""`python -m tools.classroom --url http://127.0.0.1:8501 --sessions 60`: a simulated class against a running app."""
from __future__ import annotations

import argparse
import asyncio
import json
import sys
from urllib.parse import urlsplit

from tools.classroom.load import ClassConfig, run, warm
from tools.classroom.scenario import SCENARIOS
from tools.classroom.servers import listening_pid


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tools.classroom", description=__doc__)
    p.add_argument("--url", default="http://127.0.0.1:8501", help="the app or the load balancer in front of it")
    p.add_argument("--sessions", type=int, default=60, help="students, one websocket session each")
    p.add_argument("--scenario", choices=SCENARIOS, default="class",
                   help="class: heatmap link, a head, a text, then the temperature lab's slider; "
                        "heatmap: only the heatmap steps; lab: the temperature lab's link and its slider twice")
    p.add_argument("--think", type=float, default=10.0, help="mean think time between interactions (s); 2 is a stress test")
    p.add_argument("--ramp", type=float, default=30.0, help="students arrive over this many seconds")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds before an interaction counts as a timeout")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--pid", type=int, action="append", default=[],
                   help="server process id(s) whose memory to sample (default: whatever listens on the URL's port)")
    p.add_argument("--no-warm", action="store_true", help="skip the one student who goes first (cold caches)")
    p.add_argument("--warm-url", action="append", default=[],
                   help="warm this server directly (repeat per replica: nginx's round-robin would miss some); "
                        "default: --url")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    args = p.parse_args(argv)
    pids = args.pid or [pid for pid in [listening_pid(urlsplit(args.url).port or 80)] if pid]
    if not args.no_warm:
        for url in args.warm_url or [args.url]:
            asyncio.run(warm(url, args.timeout))
    cfg = ClassConfig(args.url, args.sessions, args.scenario, args.think, args.ramp, args.timeout, args.seed)
    summary = run(cfg, pids).summary()
    if args.json:
        print(json.dumps(summary))
    else:
        for key, value in summary.items():
            print(f"{key} = {value}")
    return 0 if summary["sessions_ok"] == summary["sessions"] else 1


if __name__ == "__main__":
    sys.exit(main())
