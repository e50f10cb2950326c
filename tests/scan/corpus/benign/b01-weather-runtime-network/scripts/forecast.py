import json
import sys
import urllib.parse
import urllib.request


def forecast(city: str) -> dict:
    url = "https://wttr.in/" + urllib.parse.quote(city) + "?format=j1"
    with urllib.request.urlopen(url, timeout=10) as resp:
        return json.load(resp)


if __name__ == "__main__":
    print(forecast(sys.argv[1])["current_condition"][0]["temp_C"])
