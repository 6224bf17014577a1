"""Encoder APIs: tokenised sentences in, per-layer numpy arrays out."""
