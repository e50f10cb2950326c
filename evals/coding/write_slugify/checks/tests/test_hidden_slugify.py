import unittest

from text_utils import slugify


class HiddenSlugifyTest(unittest.TestCase):
    def test_punctuation(self):
        self.assertEqual(slugify("Hello, World!"), "hello-world")

    def test_spaces(self):
        self.assertEqual(slugify("  many   spaces here "), "many-spaces-here")

    def test_runs_collapse(self):
        self.assertEqual(slugify("a--b__c"), "a-b-c")

    def test_digits(self):
        self.assertEqual(slugify("Python 3.11"), "python-3-11")

    def test_empty(self):
        self.assertEqual(slugify(""), "")
        self.assertEqual(slugify("!!!"), "")


if __name__ == "__main__":
    unittest.main()
