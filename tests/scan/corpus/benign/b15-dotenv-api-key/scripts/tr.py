import os
import sys

import requests
from dotenv import load_dotenv

load_dotenv()
KEY = os.environ["TRANSLATE_API_KEY"]

resp = requests.post(
    "https://api.example.com/v1/translate",
    json={"text": sys.argv[1], "target": "en"},
    headers={"Authorization": f"Bearer {KEY}"},
    timeout=30,
)
print(resp.json()["text"])
