module github.com/ragen-go/ragen

go 1.26
