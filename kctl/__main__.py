"""`python -m kctl`."""

from kctl.cli.main import main

if __name__ == "__main__":
    main()
