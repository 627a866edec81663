"""Storage backends: the only code that speaks SQL."""
