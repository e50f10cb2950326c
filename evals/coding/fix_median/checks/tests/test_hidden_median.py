import unittest

from stats import median


class HiddenMedianTest(unittest.TestCase):
    def test_even_unsorted(self):
        self.assertEqual(median([10, 2, 8, 4]), 6)

    def test_two_values(self):
        self.assertEqual(median([1, 2]), 1.5)

    def test_single(self):
        self.assertEqual(median([7]), 7)

    def test_floats(self):
        self.assertAlmostEqual(median([0.5, 1.5, 2.5, 3.5, 4.5, 5.5]), 3.0)


if __name__ == "__main__":
    unittest.main()
