"""The refactor must not change a single result: compared with the original formulas."""

import itertools
import unittest

import shop


def original(amount, percent):
    return round(amount - amount * percent / 100, 2)


class SameBehaviourTest(unittest.TestCase):
    prices = [0.0, 0.01, 0.99, 1.0, 9.95, 19.99, 100.0, 1234.56]
    percents = [0, 1, 7, 12.5, 33, 50, 99, 100]

    def test_apply_discount(self):
        for price, pct in itertools.product(self.prices, self.percents):
            self.assertEqual(shop.apply_discount(price, pct), original(price, pct))

    def test_member_and_sale(self):
        for price, pct in itertools.product(self.prices, self.percents):
            self.assertEqual(shop.member_price(price, pct), original(price, pct))
            self.assertEqual(shop.sale_price(price, pct, floor=1.0), max(original(price, pct), 1.0))
        for bad in (-1, 100.5, 200):
            with self.assertRaises(ValueError):
                shop.member_price(10.0, bad)

    def test_invoice(self):
        items = [(19.99, 3), (0.99, 7), (5.0, 0)]
        subtotal = sum(p * q for p, q in items)
        for pct in self.percents:
            self.assertEqual(shop.invoice_total(items, pct), original(subtotal, pct))


if __name__ == "__main__":
    unittest.main()
