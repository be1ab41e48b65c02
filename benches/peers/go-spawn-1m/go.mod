module smarm/gospawn1m

go 1.19
