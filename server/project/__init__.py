"""Which project a working directory is: the scope rule, the repository's identity, adopting folder-named projects."""
