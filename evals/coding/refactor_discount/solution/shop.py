"""Prices in the shop. Discounts are whole percentages."""


def apply_discount(amount, percent):
    """``amount`` less ``percent`` per cent, rounded to cents."""
    return round(amount - amount * percent / 100, 2)


def invoice_total(items, percent):
    """Sum of price * quantity over ``items``, discounted, rounded to cents."""
    subtotal = sum(price * qty for price, qty in items)
    return apply_discount(subtotal, percent)


def member_price(price, percent):
    if percent < 0 or percent > 100:
        raise ValueError(f"bad discount {percent}")
    return apply_discount(price, percent)


def sale_price(price, percent, floor=0.0):
    return max(apply_discount(price, percent), floor)
