"""Command line: ``python -m sklearn_icml demo [--only NAME ...]``."""

import argparse
import sys
import traceback


def _table(rows, headers):
    widths = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(len(headers))]
    line = lambda r: " | ".join(str(c).ljust(w) for c, w in zip(r, widths))  # noqa: E731
    out = [line(headers), "-+-".join("-" * w for w in widths)]
    out += [line(r) for r in rows]
    return "\n".join(out)


def run_demo(only=None, *, stream=None):
    """Run the tour; return the number of demos that failed."""
    stream = sys.stdout if stream is None else stream
    import warnings

    from sklearn_icml.demos import all_demos, format_figures
    from sklearn_icml.utils._optional import install_hint

    demos = all_demos()
    if only:
        unknown = sorted(set(only) - {d.name for d in demos})
        if unknown:
            raise SystemExit(
                f"--only: unknown demo(s) {unknown}; choose among {[d.name for d in demos]}"
            )
        demos = [d for d in demos if d.name in only]
    rows, failed = [], 0
    for demo in demos:
        print(f"running {demo.name} ...", file=stream, flush=True)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                figures, seconds = demo.timed_call()
            rows.append([demo.name, demo.what, format_figures(figures), f"{seconds:.1f}"])
        except ImportError as exc:  # an optional dependency is missing: say which extra
            rows.append([demo.name, demo.what, f"skipped: {install_hint(exc)}", "-"])
        except Exception:  # the tour reports a broken demo and goes on
            failed += 1
            traceback.print_exc()
            rows.append([demo.name, demo.what, "FAILED (see traceback above)", "-"])
    print(file=stream)
    print(_table(rows, ["method", "what was run", "key figures", "seconds"]), file=stream)
    if failed:
        print(f"\n{failed} demo(s) failed", file=stream)
    return failed


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m sklearn_icml")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="fit every implemented method and print a table")
    demo.add_argument("--only", nargs="+", metavar="NAME", help="run only these demos")
    args = parser.parse_args(argv)
    if args.command == "demo":
        return 1 if run_demo(args.only) else 0
    return 2  # pragma: no cover


if __name__ == "__main__":
    sys.exit(main())
