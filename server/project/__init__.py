"""Which project a working directory is.

The scope rule (scope), the repository's identity read from its files (repo_identity), and
the adoption of projects named after folders by earlier versions (adoption).
"""
