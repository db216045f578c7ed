def word_counts(text, stop_words=()):
    """Count words, ignoring case and the given stop words."""
    words = [w.strip(".,;:!?").lower() for w in text.split()]
    counts = {}
    for word in words:
        if word and word not in stop_words:
            counts[word] = counts.get(word, 0) + 1
    try:
        top = max(counts, key=lambda w: counts[w])
    except ValueError:
        raise ValueError("no words in text") from None
    assert top in counts
    return counts, top
