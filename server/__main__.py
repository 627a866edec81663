"""`python -m server`: the memstrata CLI (serves stdio by default)."""

from server.cli import main

if __name__ == "__main__":
    main()
