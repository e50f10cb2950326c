import unittest

from billing import invoice, totals


class HiddenRenameTest(unittest.TestCase):
    def test_new_name(self):
        self.assertEqual(totals.compute_total([{"amount": 10}], 0.2), 12.0)

    def test_old_name_gone(self):
        self.assertFalse(hasattr(totals, "calc_total"))
        self.assertFalse(hasattr(invoice, "calc_total"))


if __name__ == "__main__":
    unittest.main()
