"""`python3 -m edgeroll_env serve path/to/environment.py[:factory] --port P`: serves one
environment over the remote-environment protocol (docs/remote-env-protocol.md)."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import traceback
from typing import Any

from .episode import OWN_RECORDS, Records
from .loader import EnvironmentLoadError, load_environment, parse_args, split_spec
from .server import EnvHTTPServer
from .service import EnvService
from .shim import install_freesolo_shim

TOKEN_ENV = "EDGEROLL_ENV_TOKEN"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python3 -m edgeroll_env")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve an environment over HTTP")
    serve.add_argument("spec", metavar="path/to/environment.py[:factory]")
    serve.add_argument("--port", type=int, default=8765, help="0 picks a free port (default 8765)")
    serve.add_argument("--host", default="127.0.0.1", help="default 127.0.0.1")
    serve.add_argument("--split", default="train", help="passed to the factory (default train)")
    serve.add_argument(
        "--arg",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a keyword argument for the factory; VALUE is JSON when it parses, else a string",
    )
    serve.add_argument(
        "--token", help=f"require Authorization: Bearer <token> (default ${TOKEN_ENV})"
    )
    serve.add_argument("--name", help="the name /info reports (default: the environment's name)")
    serve.add_argument("--max-inflight", type=int, default=64, help="calls at once before 503 busy")
    serve.add_argument(
        "--cache-size", type=int, default=4096, help="answers kept by Idempotency-Key"
    )
    serve.add_argument(
        "--force-shim",
        action="store_true",
        help="use the freesolo shim even when the SDK is installed",
    )
    serve.add_argument("--log-requests", action="store_true", help="one stderr line per request")
    return parser


def records_in_use(shimmed: bool) -> Records:
    """The record classes environment code expects: the real freesolo's when it is in use."""
    if shimmed:
        return OWN_RECORDS
    envs = sys.modules["freesolo.environments"]
    data = sys.modules["freesolo.datasets"]
    return Records(
        TaskExample=data.TaskExample,
        EnvironmentEpisode=getattr(envs, "EnvironmentEpisode", OWN_RECORDS.EnvironmentEpisode),
        EnvironmentTurn=getattr(envs, "EnvironmentTurn", OWN_RECORDS.EnvironmentTurn),
    )


def describe(env: Any, spec: str, name: str | None) -> tuple[str, str]:
    path, _ = split_spec(spec)
    module = sys.modules.get(type(env).__module__)
    found = name or getattr(env, "name", None) or path.stem
    version = getattr(env, "version", None) or getattr(module, "__version__", None) or "0"
    return str(found), str(version)


def serve(args: argparse.Namespace) -> int:
    shimmed = install_freesolo_shim(force=args.force_shim)
    kwargs = {"split": args.split, **parse_args(args.arg)}
    try:
        env = load_environment(args.spec, **kwargs)
    except EnvironmentLoadError as error:
        print(f"edgeroll_env: {error}", file=sys.stderr)
        return 2
    except Exception:  # noqa: BLE001 - the environment's import or factory raised
        print(f"edgeroll_env: loading {args.spec} failed:", file=sys.stderr)
        traceback.print_exc(file=sys.stderr)
        return 1
    name, version = describe(env, args.spec, args.name)
    service = EnvService(env, name=name, version=version, records=records_in_use(shimmed))
    token = args.token if args.token is not None else os.environ.get(TOKEN_ENV)
    try:
        server = EnvHTTPServer(
            (args.host, args.port),
            service,
            token=token,
            max_inflight=args.max_inflight,
            cache_size=args.cache_size,
            log_requests=args.log_requests,
        )
    except OSError as error:
        print(f"edgeroll_env: cannot listen on {args.host}:{args.port}: {error}", file=sys.stderr)
        return 1
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(f"edgeroll_env serving {name} on {server.url}", flush=True)
    try:
        server.serve_forever(poll_interval=0.5)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "serve":
            return serve(args)
    except EnvironmentLoadError as error:
        print(f"edgeroll_env: {error}", file=sys.stderr)
        return 2
    return 2


if __name__ == "__main__":
    sys.exit(main())
