// Each memory's BM25 terms (its key texts + content, tokenised when written), joined by U+001F,
// so opening a store reloads the lexical index without re-running the Korean analyser over
// every memory (~40 s at 100k memories). NULL until written; filled on open when missing.
ALTER TABLE Memory ADD terms STRING;
