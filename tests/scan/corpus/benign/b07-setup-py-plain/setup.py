from setuptools import find_packages, setup

setup(
    name="tabulate-lite",
    version="0.3.0",
    packages=find_packages(),
    install_requires=["wcwidth>=0.2"],
    url="https://github.com/example/tabulate-lite",
)
