#!/usr/bin/env bash
# The scrape configuration and the alert rules operators copy from the
# README are valid for Prometheus, and each alert fires on the series that
# should raise it: promtool check config, check rules and test rules.
# promtool comes with Debian's prometheus package (tools/install-deps.sh);
# without it this test fails.
#
#   promtool_test.sh PROMETHEUS_YML RULES_YML RULES_TEST_YML
set -euo pipefail
command -v promtool >/dev/null ||
    { echo "FAIL: promtool not found: install Debian's prometheus package (tools/install-deps.sh)"; exit 1; }
# promtool resolves rule_files against the directory of the file naming them.
promtool check config "$1"
promtool check rules "$2"
promtool test rules "$3"
echo PASS
