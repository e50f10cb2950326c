import unittest

from pages import paginate


class HiddenPagesTest(unittest.TestCase):
    def test_every_page(self):
        items = list(range(23))
        pages = [paginate(items, p, 5) for p in range(1, 6)]
        self.assertEqual(sum(pages, []), items)
        self.assertEqual(pages[-1], [20, 21, 22])

    def test_past_the_end(self):
        self.assertEqual(paginate(list(range(3)), 2, 5), [])

    def test_rejects_page_zero(self):
        with self.assertRaises(ValueError):
            paginate([1], 0)


if __name__ == "__main__":
    unittest.main()
