module stateward.io/e2e/harness/realnode/images/pause

go 1.26.0
