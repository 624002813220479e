struct EngineBench { init(arguments: Arguments) throws {}; func run() throws -> Int32 { 0 } }
