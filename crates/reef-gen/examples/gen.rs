fn main() {
    let a: Vec<String> = std::env::args().collect();
    match reef_gen::generate(a[1].as_ref(), a[2].as_ref()) {
        Ok(_) => {}
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1)
        }
    }
}
