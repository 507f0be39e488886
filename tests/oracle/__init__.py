"""The oracle: fixtures run under torch, checked against each rule's runtime truth."""
