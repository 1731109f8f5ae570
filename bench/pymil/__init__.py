"""Why our MIL protobuf writer stays: coremltools' own serialisation of a
pymil `Program` built from the same mil module (`export`: time, memory and
the packages compared; `coverage`: which mil ops its builder takes).
`python -m bench.pymil` runs both, each in a process of its own, and stores
them under `pymil_writer` in bench/results.json."""
