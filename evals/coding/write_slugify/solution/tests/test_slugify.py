import unittest

from text_utils import slugify


class SlugifyTest(unittest.TestCase):
    def test_basic(self):
        self.assertEqual(slugify("Hello, World!"), "hello-world")

    def test_edges(self):
        self.assertEqual(slugify("--x--"), "x")


if __name__ == "__main__":
    unittest.main()
