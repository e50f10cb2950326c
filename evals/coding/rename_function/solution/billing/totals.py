"""Invoice arithmetic."""


def compute_total(lines, tax_rate=0.0):
    """Sum of the lines' amounts, plus tax, rounded to cents."""
    net = sum(line["amount"] for line in lines)
    return round(net * (1 + tax_rate), 2)
