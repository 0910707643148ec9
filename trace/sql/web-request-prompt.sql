-- A request's prompt and its token count, as layer 7 tokenized it. ?1: run, ?2: request.
SELECT json_extract(args, '$.text'), json_extract(args, '$.tokens') FROM slices
WHERE run_id = ?1 AND request = ?2 AND layer = 7 AND name = 'tokenize'
