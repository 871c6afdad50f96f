module github.com/lodestream/lodestream

go 1.26
