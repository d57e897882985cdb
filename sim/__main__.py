import sys

try:  # Ctrl-C while the imports run (hydra, pandas, scipy: about a second), before main's own
    from sim.cli import main  # handler: the same one line and status 130, not a trace
except KeyboardInterrupt:
    print("interrupted", file=sys.stderr)
    sys.exit(130)

if __name__ == "__main__":
    sys.exit(main())
