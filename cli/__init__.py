"""The `hetprof` command line: parses arguments, runs the pipeline, renders, prints and exits."""
