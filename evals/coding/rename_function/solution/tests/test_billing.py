import unittest

from billing.invoice import render
from billing.totals import compute_total

LINES = [{"label": "Tea", "amount": 4.5}, {"label": "Cake", "amount": 3.25}]


class BillingTest(unittest.TestCase):
    def test_total_with_tax(self):
        self.assertEqual(compute_total(LINES, 0.1), 8.53)

    def test_render(self):
        self.assertTrue(render("Ada", LINES).endswith("Total: 7.75"))


if __name__ == "__main__":
    unittest.main()
