#!/usr/bin/env bash
# Fails, saying what to install, when a tool the test suite needs is missing.
set -euo pipefail
missing=0
need() {
  if ! command -v "$1" >/dev/null 2>&1; then
    echo "kraftd: '$1' is missing; install $2" >&2
    missing=1
  fi
}
need go "Go 1.26 or newer (https://go.dev/dl or: apt-get install golang)"
need java "Java 17 or newer (apt-get install openjdk-17-jre-headless)"
need mvn "Apache Maven (apt-get install maven)"
need prometheus "Prometheus, which the metrics test scrapes kraftd with (apt-get install prometheus)"
need podman "podman, which the image test runs kraftd's image with (apt-get install podman runc)"
need promtool "promtool, from the prometheus package, which checks the alert rules in deploy/prometheus (apt-get install prometheus)"
need systemd-analyze "systemd-analyze, which checks deploy/systemd/kraftd.service (apt-get install systemd)"
exit $missing
