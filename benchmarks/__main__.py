"""``python -m benchmarks COMMAND [OPTIONS]``: run one benchmark, the demo or the vectors generator."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

#: Command -> the module whose ``main(argv)`` runs it.
COMMANDS = {"demo": "benchmarks.demo", "bench": "benchmarks.bench", "bench-spark": "benchmarks.bench_spark",
            "bench-write": "benchmarks.bench_write", "bench-attach": "benchmarks.bench_attach",
            "bench-lookup": "benchmarks.bench_lookup", "bench-thrift": "benchmarks.bench_thrift",
            "bench-probe": "benchmarks.probe", "bench-kek-cache": "benchmarks.kek_cache",
            "bench-kms-requests": "benchmarks.aws_kms_requests", "vectors": "benchmarks.vectors"}


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] not in COMMANDS:
        print("usage: python -m benchmarks COMMAND [OPTIONS]  ('python -m benchmarks COMMAND --help' for its options)\n"
              "commands: " + ", ".join(COMMANDS), file=sys.stderr if args else sys.stdout)
        return 2 if args and args[0] not in ("-h", "--help") else 0
    from secure_bloom.cli.exits import describe
    from secure_bloom.errors import SecureBloomError

    try:
        return int(importlib.import_module(COMMANDS[args[0]]).main(args[1:]) or 0)
    except (OSError, SecureBloomError) as e:  # one readable line, as the CLI prints its errors
        print(f"python -m benchmarks {args[0]}: error: {describe(None, e) if isinstance(e, OSError) else e}",
              file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
