def count_chars(string, character):
    count = 0
    for letter in string:
        if letter == character:
            count = count + 1
    return count
