"""Leaderboards rendered from result records."""
