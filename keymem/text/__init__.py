"""Text analysis: tokenisation for BM25 and literal names, key suggestion. Imports no other keymem room."""
