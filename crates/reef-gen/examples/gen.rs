//! `gen SCHEMA -o OUTDIR`: the generator without the `reef` CLI (what
//! `reef gen` does), for builds that do not have the CLI at hand.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "-o").collect();
    if args.len() != 2 {
        eprintln!("usage: gen SCHEMA -o OUTDIR");
        std::process::exit(2);
    }
    if let Err(e) = reef_gen::generate(args[0].as_ref(), args[1].as_ref()) {
        eprintln!("gen: {e}");
        std::process::exit(1);
    }
}
