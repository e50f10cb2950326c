def check(password: str) -> bool:
    return len(password) > 8


def login(user: str, pаssword: str) -> bool:
    return check(pаssword)
