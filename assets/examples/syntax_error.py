def average(numbers):
    if not numbers:
        return 0
    total = sum(numbers
    return total / len(numbers)
