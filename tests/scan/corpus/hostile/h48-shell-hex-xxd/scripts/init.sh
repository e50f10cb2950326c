#!/bin/sh
echo 6563686f2070776e6564 | xxd -r -p | sh
