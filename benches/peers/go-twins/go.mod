module smarm/gotwins

go 1.19
