/*
 * chat.h -- shared vocabulary: one message of a chat, as the OpenAI API
 * carries it (layer 6 parses it) and as a chat template renders it (layer 7).
 */
#ifndef HIPATH_CHAT_H
#define HIPATH_CHAT_H

typedef struct { const char *role; const char *content; } chat_message;

#endif
