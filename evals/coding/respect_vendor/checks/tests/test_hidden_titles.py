import unittest

from app.report import format_title


class HiddenTitleTest(unittest.TestCase):
    def test_every_length_fits(self):
        for n in range(0, 60):
            title = format_title("t" * n)
            self.assertLessEqual(len(title), 20, n)
            if n <= 20:
                self.assertEqual(title, "t" * n)
            else:
                self.assertTrue(title.endswith("..."), n)


if __name__ == "__main__":
    unittest.main()
