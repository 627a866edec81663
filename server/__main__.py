"""`python -m server`: the memstrata CLI (serves stdio by default)."""

from server.cli.commands import main

if __name__ == "__main__":
    main()
