module github.com/capd-e2e/capd-e2e/cloudprovider/names

go 1.26.0
